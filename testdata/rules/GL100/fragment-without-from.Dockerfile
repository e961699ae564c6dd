# A fragment that a build script concatenates after a file with the FROM.
LABEL maintainer="x"
RUN pip install --no-cache-dir numpy
USER 1000
