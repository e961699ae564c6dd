# torch is not named here: it comes with the project's own dependencies (torch-project/pyproject.toml).
FROM nvidia/cuda:12.1.1-runtime-ubuntu22.04
COPY torch-project /src/torch-project
RUN pip install /src/torch-project
