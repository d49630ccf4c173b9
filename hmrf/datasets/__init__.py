"""Data in: the data sets of the papers, the user's own files, text pre-processing.

* ``hmrf.datasets.loaders`` — :func:`load_dataset` and :func:`available`: the
  data sets of the papers by name (Iris, the newsgroup subsets, ...);
* ``hmrf.datasets.files`` — :func:`read_data`, :func:`read_pairs`,
  :func:`read_labels`: points, constraints and labels from the user's CSV, TSV, NPY,
  NPZ, Parquet or text files, with errors that name the file, the row and the column;
* ``hmrf.datasets.parquet_rows`` — :func:`read_parquet_rows`: Parquet files as a
  row-chunked Dask array, read by the workers of a cluster;
* ``hmrf.datasets.text`` — the thesis's TF-IDF (§2.5) and the corpus readers;
* ``hmrf.datasets.images`` — :func:`image_pixels`, :func:`segmented_image`,
  :func:`read_image`, ...: the pixels of a photograph as points, a segmentation back
  as an image (Pillow only when a file is read or written).

Nothing here imports scikit-learn until a loader or the TF-IDF runs.
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
