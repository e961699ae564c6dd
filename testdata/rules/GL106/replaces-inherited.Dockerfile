# CUDA installed on an OS base; LD_LIBRARY_PATH is set, not appended to.
FROM opensuse/leap:15.6
RUN zypper install -y cuda-libraries-12-6
ENV LD_LIBRARY_PATH="/usr/lib64:/usr/local/cuda-12.6/lib64"
