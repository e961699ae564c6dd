FROM continuumio/miniconda3:24.1.2-0
RUN conda install -y cudatoolkit=11.8 && pip install torch==2.3.1
