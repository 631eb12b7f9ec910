"""``python -m reproduce NAME [options]`` runs one experiment; ``list`` names them; ``render [--check]`` makes the
result pages and the reproduction table from the JSON results (``--check``: compare instead of writing)."""

from __future__ import annotations

import sys

from . import EXPERIMENTS, _common, load

USAGE = ("usage: python -m reproduce {list,render,NAME} [options]\n"
         "  list               the experiments, the claims each tests and its sizes\n"
         "  render [--check]   write (or, with --check, compare) every result page and the reproduction page\n"
         "  NAME [--help]      run experiment NAME, one of: " + ", ".join(EXPERIMENTS))


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0 if argv else 2
    cmd, rest = argv[0], argv[1:]
    if cmd == "list":
        for name in EXPERIMENTS:
            mod = load(name)
            doc = (mod.__doc__ or "").strip().split("\n\n")[0].replace("\n", " ")
            print(f"{name}: claims {', '.join(mod.CLAIMS)}; sizes {', '.join(mod.SIZES)}\n    {doc}")
        return 0
    if cmd == "render":
        from . import render
        return _common.run_main("python -m reproduce render", render.main, rest)
    if cmd not in EXPERIMENTS:
        print(f"python -m reproduce: error: NAME must be list, render or one of {', '.join(EXPERIMENTS)}; "
              f"got {cmd!r}", file=sys.stderr)
        return 2
    return _common.run_main(f"python -m reproduce {cmd}", load(cmd).run, rest)


if __name__ == "__main__":
    sys.exit(main())
