#!/bin/sh
export CUDA_HOME="${CONDA_PREFIX}"
