#!/bin/sh
# The nightly job of conf/nightly.yaml, for cron or any scheduler, run from the project folder:
#
#   15 2 * * *  cd /srv/sparkfs && conf/nightly.sh >> logs/nightly.out 2>> logs/nightly.jsonl
#
# The run id is the day (UTC), so a retry on the same day skips a run that has finished. Results
# go to stdout, logs to stderr as JSON lines. Exit codes: 0 done or skipped; 1 a Spark or other
# failure (worth a retry); 2 bad input, config or a refused output (fix it first); 130 / 143
# interrupted (SIGINT / SIGTERM). Extra flags are passed on (e.g. --master yarn, --input ...).
# Under spark-submit: spark-submit jobs/select_features.py --config conf/nightly.yaml --run-id ...
set -eu
RUN_ID="${RUN_ID:-$(date -u +%Y%m%d)}"
exec sparkfs select --config conf/nightly.yaml --run-id "$RUN_ID" --log-format json "$@"
