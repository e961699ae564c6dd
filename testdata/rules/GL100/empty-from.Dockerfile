FROM
RUN echo hi
