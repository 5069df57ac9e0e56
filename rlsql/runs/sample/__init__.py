# The sample run shipped inside the package (written by fixtures/generate.py).
