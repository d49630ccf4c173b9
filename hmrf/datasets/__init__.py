"""Data in: the data sets of the papers (:func:`load_dataset`), the user's own files
(:func:`read_data`, :func:`read_pairs`, :func:`read_labels`, :func:`read_parquet_rows`),
text pre-processing (:mod:`hmrf.datasets.text`) and images (:func:`image_pixels`, ...).
"""

from .files import DataFileError, read_data, read_labels, read_pairs
from .images import image_pixels, label_image, read_image, segmented_image, write_image
from .loaders import (
    DATASETS,
    NEWSGROUP_SUBSETS,
    PACKAGES,
    available,
    install_command,
    load_dataset,
    package_file,
)
from .parquet_rows import read_parquet_rows

__all__ = ["load_dataset", "available", "DATASETS", "NEWSGROUP_SUBSETS", "PACKAGES",
           "install_command", "package_file", "read_data", "read_pairs", "read_labels", "read_parquet_rows",
           "DataFileError", "image_pixels", "label_image", "segmented_image", "read_image",
           "write_image"]
