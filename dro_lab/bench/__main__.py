"""``python -m dro_lab.bench``: the same as ``dro-lab bench``."""

from .cli import main

if __name__ == "__main__":
    raise SystemExit(main())
