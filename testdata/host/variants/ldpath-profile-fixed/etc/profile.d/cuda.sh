# CUDA 12.1 toolkit
export PATH=/usr/local/cuda-12.1/bin${PATH:+:${PATH}}
