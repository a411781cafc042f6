"""Allow ``python -m gotk``."""

from gotk.cli.main import main

if __name__ == "__main__":
    main()
