"""``sparkfs methods [NAME]``: the methods and what each needs, or one method's params (no Spark)."""

from __future__ import annotations

import sys

from sparkfs.commands import Command


def add_arguments(commands) -> None:
    methods = commands.add_parser("methods", help="list the methods (sparkfs methods NAME: its params)")
    methods.add_argument("name", nargs="?", help="a method: list its params with meanings, defaults and values")


def run(args) -> int:
    from sparkfs.methods import EVALUATE_ONLY, METHODS, method_params, methods_table

    if args.name and args.name not in METHODS and args.name not in EVALUATE_ONLY:
        print(f"sparkfs: error: unknown method '{args.name}': use one of "
              f"{', '.join(sorted([*METHODS, *EVALUATE_ONLY]))}", file=sys.stderr)
        return 2
    print("\n".join(method_params(args.name) if args.name else methods_table()))
    return 0


COMMAND = Command(add_arguments, run, guarded=False)
