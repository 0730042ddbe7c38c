#!/usr/bin/env bash
# Which tests scripts/test.sh runs, from what this machine has. A test that needs a program or a
# service is `#[ignore = "needs ..."]`; it runs where that is here, and is otherwise left to the
# runner to report as skipped (nextest's "skipped", cargo test's "ignored"), never as passed.
# Under CI=true a missing one is an error: CI installs them all (.ci/run).
#
#   scripts/test-select.sh nextest|cargo [ARGS...]
#
# Prints the runner's commands, one a line, shell-quoted; and lines starting with "# " saying
# what runs and what is skipped, and why. ARGS (the test command's own) are passed through as
# they are, with no selection added: they choose the tests themselves. Exit 1 under CI=true when
# a test cannot run here.
set -euo pipefail

runner="${1:?nextest or cargo}"
shift

# The opt-in comparison over a corpus of CUDA files: it needs CORPUS, and never runs here.
corpus='rewrite::matcher::tests::corpus'

# Each group: the test file (tests/NAME.rs), and a check that prints why it cannot run.
groups=(report_browser slurm)

why_not_report_browser() {
    if [[ -n "${WMFIX_CHROMIUM:-}" ]] || command -v chromium >/dev/null ||
        command -v chromium-browser >/dev/null; then
        return
    fi
    echo "no chromium on PATH (apt-get install -y chromium, or set WMFIX_CHROMIUM)"
}

# As tests/slurm.rs finds the cluster: SLURM_CONF, else the one scripts/slurm-local.sh writes.
why_not_slurm() {
    local dir="${WMFIX_SLURM_DIR:-/tmp/wmfix-slurm}" states state
    if [[ -z "${SLURM_CONF:-}" && -f "$dir/slurm.conf" ]]; then
        export SLURM_CONF="$dir/slurm.conf"
    fi
    if ! command -v sinfo >/dev/null; then
        echo "no Slurm cluster: no sinfo on PATH (scripts/slurm-local.sh install, then start)"
        return
    fi
    if ! states="$(timeout 20 sinfo --noheader --format=%t 2>&1)"; then
        echo "no Slurm cluster: sinfo failed: ${states//$'\n'/ } (scripts/slurm-local.sh start runs one here)"
        return
    fi
    for state in $states; do
        case "$state" in idle | mix | alloc) return ;; esac
    done
    echo "no Slurm cluster: no node idle, mixed or allocated: ${states//$'\n'/ } (scripts/slurm-local.sh start)"
}

run=()
skipped=()
whys=()
for g in "${groups[@]}"; do
    why="$("why_not_$g")"
    if [[ -z "$why" ]]; then
        run+=("$g")
        echo "# tests/$g.rs: runs"
    else
        skipped+=("$g")
        whys+=("tests/$g.rs: $why")
        echo "# tests/$g.rs: skipped (the runner reports it so): $why"
    fi
done

quoted() {
    printf '%q ' "$@"
    echo
}

if [[ $# -gt 0 ]]; then
    echo "# arguments given: they select the tests; ignored tests run only if they ask for them"
    run=()
fi
case "$runner" in
nextest)
    command=(cargo nextest run --cargo-profile test-fast --locked --no-fail-fast)
    if [[ ${#run[@]} -gt 0 ]]; then
        filter="test(=$corpus)"
        for g in "${skipped[@]}"; do
            filter+=" | binary_id(wmfix::$g)"
        done
        command+=(--run-ignored all -E "not ($filter)")
    fi
    quoted "${command[@]}" "$@"
    ;;
cargo)
    quoted cargo test --profile test-fast --locked --no-fail-fast "$@"
    # libtest has no filter by file: the tests that can run here, in a pass of their own.
    if [[ ${#run[@]} -gt 0 ]]; then
        tests=()
        for g in "${run[@]}"; do
            tests+=(--test "$g")
        done
        quoted cargo test --profile test-fast --locked --no-fail-fast "${tests[@]}" -- --ignored
    fi
    ;;
*)
    echo "test-select: unknown runner $runner (nextest or cargo)" >&2
    exit 64
    ;;
esac

if [[ "${CI:-}" == true && ${#skipped[@]} -gt 0 ]]; then
    echo "test-select: CI=true and tests cannot run (.ci/run installs what they need):" >&2
    printf '  %s\n' "${whys[@]}" >&2
    exit 1
fi
