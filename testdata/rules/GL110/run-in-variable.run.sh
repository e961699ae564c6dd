#!/bin/sh
# The docker run command is kept in a variable; the shell splits it into words.
CMD="docker run --rm -v /data:/data"
$CMD nvidia/cuda:12.4.1-base-ubuntu22.04 nvidia-smi
