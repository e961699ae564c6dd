//! On-disk formats that several layers read, on the floor below them: [`tar`], the one parser
//! that decides every tar header boundary (image archives in `source/`, layers in `walk/`).

pub(crate) mod tar;
