"""Time the torch suite (rooflab/validate/torch_suite.py) on a GPU; write the run's JSON.

    python lab/torch_kernels/run.py --out $OUT/torch-run.json [--budget-s 330] [--only REGEX]
        [--no-profile] [--no-compile] [--split calibration|validation] [--device cuda]

One line per case as it goes; the file is rewritten after every case, so a run cut short keeps
what it finished.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

from rooflab.validate import torch_run, torch_suite  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="the JSON file to write")
    ap.add_argument("--budget-s", type=float, default=330.0, help="wall-time budget, seconds")
    ap.add_argument("--only", help="regex: run only cases whose id matches")
    ap.add_argument("--split", choices=torch_suite.SPLITS)
    ap.add_argument("--no-profile", action="store_true")
    ap.add_argument("--no-compile", action="store_true")
    ap.add_argument("--device", default="cuda")
    args = ap.parse_args(argv)
    cases = torch_suite.select(args.only, args.split)
    print(f"{len(cases)} cases, {sum(c.compile for c in cases)} compiled, budget "
          f"{args.budget_s:.0f} s", flush=True)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)

    def write(result):
        tmp = args.out + ".tmp"
        with open(tmp, "w") as f:
            json.dump(result, f, indent=1)
        os.replace(tmp, args.out)

    def on_case(entry, result):
        print(torch_run.summary_line(entry), flush=True)
        write(result)

    result = torch_run.run(cases, device=args.device, budget_s=args.budget_s,
                           profile=not args.no_profile, compile=not args.no_compile,
                           command=shlex.join(["python"] + sys.argv), on_case=on_case)
    write(result)
    print(f"host: {json.dumps(result['host'])}")
    errors = sum("error" in c for c in result["cases"])
    print(f"{result['cases_run']}/{len(cases)} cases run, {errors} with errors, "
          f"{result['wall_s']:.0f} s -> {args.out}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
