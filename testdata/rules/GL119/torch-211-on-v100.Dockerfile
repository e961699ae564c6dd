# args: --gpu V100 --driver 580.65.06
FROM python:3.12-slim
RUN pip install torch==2.11.0
