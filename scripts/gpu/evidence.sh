#!/usr/bin/env bash
# Every GPU figure the READMEs cite, regenerated on one H100/H200: the one GPU script.
#
#   scripts/gpu/evidence.sh --list             # the steps, in priority order, and which are done
#   scripts/gpu/evidence.sh --table            # each step's command, budget and outputs
#   scripts/gpu/evidence.sh [PATTERN ...]      # run the steps not yet done (all, or those matching)
#
# The steps are declared in steps.py (name, command, budget, outputs) and run by evidence.py,
# each a function of evidence_lib.sh; evidence.py's docstring says the variables and the rest.
exec python3 "$(dirname "${BASH_SOURCE[0]}")/evidence.py" "$@"
