# args: --gpu H100 --driver 550.54.15
FROM python:3.11-slim
RUN pip install torch==2.0.1
