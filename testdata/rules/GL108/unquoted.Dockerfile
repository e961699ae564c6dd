FROM python:3.11-slim
RUN pip install torch>=2.1 'numpy<2'
