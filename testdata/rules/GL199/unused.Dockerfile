FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04
# gpulint ignore=GL108 nothing to ignore here
RUN pip install 'numpy<2'
