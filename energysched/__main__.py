"""``python -m energysched``: the same command line as the ``energysched`` script."""

from energysched.cli import main

if __name__ == "__main__":
    main()
