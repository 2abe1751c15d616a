#!/bin/sh
# The entry point of an Indexed Job's pod (indexed-job.yaml): builds TF_CONFIG from
# the pod's index and the job's shape, then runs train (or $RINGWORK_TRAIN) with the
# arguments given. Worker 0 is the chief (TensorFlow's rule without a chief job).
#
#   JOB_COMPLETION_INDEX  set by Kubernetes: this pod's index
#   RINGWORK_JOB_NAME, RINGWORK_SERVICE, RINGWORK_NAMESPACE, RINGWORK_WORKERS, RINGWORK_PORT
set -eu
: "${JOB_COMPLETION_INDEX:?not an Indexed Job pod (JOB_COMPLETION_INDEX is unset)}"
: "${RINGWORK_JOB_NAME:?}" "${RINGWORK_SERVICE:?}" "${RINGWORK_WORKERS:?}"
namespace=${RINGWORK_NAMESPACE:-default}
port=${RINGWORK_PORT:-2222}
workers=""
i=0
while [ "$i" -lt "$RINGWORK_WORKERS" ]; do
  workers="$workers${workers:+,}\"$RINGWORK_JOB_NAME-$i.$RINGWORK_SERVICE.$namespace.svc:$port\""
  i=$((i + 1))
done
TF_CONFIG="{\"cluster\": {\"worker\": [$workers]}, \"task\": {\"type\": \"worker\", \"index\": $JOB_COMPLETION_INDEX}}"
export TF_CONFIG
exec "${RINGWORK_TRAIN:-train}" "$@"
