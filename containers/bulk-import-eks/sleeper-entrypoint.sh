#!/bin/bash
# The EKS bulk import image's entry point. For the spark-submit the state machine's Kubernetes job runs: writes the
# executor pod template it is given (EXECUTOR_POD_TEMPLATE) where the Spark settings name it, and tells Spark the
# image of the driver and executor pods (SLEEPER_SPARK_IMAGE, set by EksBulkImportStack); `spark-submit` is the
# image's Spark's ($SPARK_HOME/bin), whatever else PATH holds. Anything else (the driver and executor pods Spark
# starts) goes to Spark's own entry point.
set -euo pipefail

if [ -n "${EXECUTOR_POD_TEMPLATE:-}" ]; then
    printf '%s' "$EXECUTOR_POD_TEMPLATE" > /tmp/executor-template.yaml
fi

if [ "${1:-}" = "spark-submit" ]; then
    shift
    if [ -n "${SLEEPER_SPARK_IMAGE:-}" ]; then
        set -- --conf "spark.kubernetes.container.image=${SLEEPER_SPARK_IMAGE}" "$@"
    fi
    exec /opt/entrypoint.sh "${SPARK_HOME}/bin/spark-submit" "$@"
fi

exec /opt/entrypoint.sh "$@"
