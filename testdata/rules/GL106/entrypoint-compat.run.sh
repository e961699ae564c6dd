#!/bin/sh
# An image's entrypoint puts the forward-compatibility libcuda first on older drivers.
if [ "$DRIVER_INT" -lt 120901 ]; then
    export LD_LIBRARY_PATH="/usr/local/cuda/compat:${LD_LIBRARY_PATH}"
fi
exec server "$@"
