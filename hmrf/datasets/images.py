"""Images as points: the pixels of a photograph in (row-major, the numbering of
:meth:`hmrf.Constraints.grid`), a segmentation out. Files are read and written with
Pillow, imported on first use.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import numpy as np

from .._optional import load
from .files import DataFileError, check_exists

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

__all__ = ["image_pixels", "label_image", "segmented_image", "read_image", "write_image"]


def _check_image(image, name: str = "image") -> np.ndarray:
    arr = np.asarray(image)
    if arr.ndim not in (2, 3) or arr.shape[0] < 1 or arr.shape[1] < 1 or (arr.ndim == 3 and arr.shape[2] < 1):
        raise ValueError(f"{name} must be an (h, w) grey or (h, w, channels) colour image; got an array "
                         f"of shape {arr.shape}.")
    if arr.dtype.kind not in "buif":
        raise ValueError(f"{name} must hold numbers; got dtype {arr.dtype}.")
    return arr


def image_pixels(image: ArrayLike) -> np.ndarray:
    """The pixels of an image (h, w) or (h, w, channels) as points: an ``(h · w,
    channels)`` float32 array whose row ``r * w + c`` is pixel ``(r, c)``, the numbering
    of :meth:`hmrf.Constraints.grid`.

    Unsigned integer images are scaled to ``[0, 1]`` by their type's maximum (255 for
    ``uint8``), float images taken as they are; a signed integer image, or NaN / inf
    values, raise ``ValueError``.

    Examples
    --------
    >>> from hmrf.datasets import image_pixels
    >>> import numpy as np
    >>> image = np.array([[[255, 0, 0], [0, 0, 255]]], dtype=np.uint8)   # 1 x 2, red and blue
    >>> image_pixels(image).tolist()
    [[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]
    """
    arr = _check_image(image)
    h, w = arr.shape[:2]
    if arr.dtype.kind == "u":
        rows = arr.reshape(h * w, -1).astype(np.float32) / np.float32(np.iinfo(arr.dtype).max)
    elif arr.dtype.kind == "i":
        raise ValueError(f"image has signed integer type {arr.dtype}; pass unsigned integers (e.g. uint8, "
                         "scaled to [0, 1]) or floats (taken as they are).")
    else:
        rows = arr.reshape(h * w, -1).astype(np.float32)
    if not np.all(np.isfinite(rows)):
        r = int(np.flatnonzero(~np.isfinite(rows).all(axis=1))[0])
        raise ValueError(f"image pixel (row {r // w}, column {r % w}) is NaN or infinite.")
    return rows


def _check_labels(labels, shape) -> tuple[np.ndarray, tuple[int, int]]:
    from .._grid import check_shape

    h, w = check_shape(shape)
    y = np.asarray(labels)
    if y.shape != (h * w,) and y.shape != (h, w):
        raise ValueError(f"labels must have one entry per pixel, shape ({h * w},) or {(h, w)}; "
                         f"got {y.shape}.")
    if y.dtype.kind not in "iu":
        raise ValueError(f"labels must be integers; got dtype {y.dtype}.")
    return y.reshape(h * w), (h, w)


def label_image(labels: ArrayLike, shape: tuple[int, int]) -> np.ndarray:
    """Cluster indices (row-major, e.g. ``estimator.labels_``) as an ``(h, w)`` int64
    image (the inverse of :func:`image_pixels`'s order)."""
    y, hw = _check_labels(labels, shape)
    return y.astype(np.int64).reshape(hw)


def segmented_image(labels: ArrayLike, centers: ArrayLike, shape: tuple[int, int]) -> np.ndarray:
    """Each pixel painted with the centre of its cluster: ``centers[labels]`` as an
    ``(h, w, channels)`` float32 image (``(h, w)`` for one channel), ``centers`` the
    ``cluster_centers_`` of a fit on :func:`image_pixels`.

    Examples
    --------
    >>> from hmrf.datasets import segmented_image
    >>> import numpy as np
    >>> segmented_image([0, 1, 1, 0], [[0.0, 0.0, 0.0], [1.0, 1.0, 1.0]], (2, 2))[:, :, 0].tolist()
    [[0.0, 1.0], [1.0, 0.0]]
    """
    y, (h, w) = _check_labels(labels, shape)
    C = np.asarray(centers, dtype=np.float32)
    if C.ndim != 2:
        raise ValueError(f"centers must have shape (k, channels); got {C.shape}.")
    if y.size and (y.min() < 0 or y.max() >= C.shape[0]):
        raise ValueError(f"labels must lie in [0, {C.shape[0] - 1}] for {C.shape[0]} centres.")
    out = C[y].reshape(h, w, C.shape[1])
    return out[:, :, 0] if C.shape[1] == 1 else out


def read_image(path: str | os.PathLike[str]) -> np.ndarray:
    """An image file (any format Pillow reads) as ``(h, w, 3)`` uint8 RGB, or ``(h, w)``
    for a grey image (16-bit grey keeps uint16; the alpha channel is dropped). A missing
    or unreadable file raises :class:`DataFileError`.
    """
    path = os.fspath(path)
    check_exists(path)
    load("PIL.Image", purpose=f"{path}: reading images", hint="Pillow also comes with matplotlib")
    from PIL import Image, UnidentifiedImageError
    try:
        with Image.open(path) as im:
            if im.mode in ("L", "I;16", "I;16B", "I;16L"):
                arr = np.asarray(im)
            elif im.mode in ("1", "LA"):
                arr = np.asarray(im.convert("L"))
            else:
                arr = np.asarray(im.convert("RGB"))
    except UnidentifiedImageError:
        raise DataFileError(path, "not an image file Pillow can read (PNG, JPEG, TIFF, BMP, ...)") from None
    except OSError as exc:
        raise DataFileError(path, f"cannot read the image ({exc})") from None
    if arr.dtype.kind == "i":  # Pillow's 16-bit grey mode
        arr = arr.astype(np.uint16)
    return arr


def write_image(path: str | os.PathLike[str], image: ArrayLike) -> str:
    """Write an image to a PNG file; returns the path. uint8 values are written as they
    are, float values in ``[0, 1]`` (clipped) scaled to 0-255 (the units of
    :func:`image_pixels`), other integers must lie in ``[0, 255]``."""
    arr = _check_image(image)
    if arr.ndim == 3 and arr.shape[2] not in (1, 3):
        raise ValueError(f"write_image writes grey (h, w) or RGB (h, w, 3) images; got {arr.shape[2]} "
                         "channels.")
    if arr.ndim == 3 and arr.shape[2] == 1:
        arr = arr[:, :, 0]
    if arr.dtype.kind == "f":
        out = np.round(np.clip(arr, 0.0, 1.0) * 255).astype(np.uint8)
    elif arr.dtype != np.uint8:
        if arr.size and (arr.min() < 0 or arr.max() > 255):
            raise ValueError(f"integer image values must lie in [0, 255]; got [{arr.min()}, {arr.max()}].")
        out = arr.astype(np.uint8)
    else:
        out = arr
    Image = load("PIL.Image", purpose="write_image", hint="Pillow also comes with matplotlib")
    path = os.fspath(path)
    Image.fromarray(out).save(path, format="PNG")
    return path
