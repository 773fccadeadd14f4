"""CSS colours of any level, read by tinycss2 and brought to sRGB for comparison.

tinycss2's Colour Level 4 parser reads every syntax a page may use (`rgb(255
255 255 / 0)`, `hwb()`, `lab()`, `oklch()`, `color()`), but converts only
between some spaces. What is judged here is whether text is transparent or
within a few levels of its background, so every colour is brought to sRGB
with the conversions of CSS Color 4: Lab and LCh through XYZ D50 (Bradford to
D65), Oklab and OkLCh through XYZ D65, then the XYZ to linear sRGB matrix and
sRGB's transfer curve, clamped to the gamut. A colour in a space without a
conversion here (`display-p3`, `rec2020`, ...) is unknown, unless its alpha
says it is transparent, which holds in any space.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Final, NamedTuple

import tinycss2.color3  # type: ignore[import-untyped]
import tinycss2.color4  # type: ignore[import-untyped]


class _Rgba(NamedTuple):
    red: float
    green: float
    blue: float
    alpha: float


_INVISIBLE_ALPHA: Final = 0.01

_Matrix = tuple[tuple[float, float, float], tuple[float, float, float], tuple[float, float, float]]

# CSS Color 4, section 18 (sample code for colour conversions).
_XYZ_D65_TO_LINEAR_SRGB: Final[_Matrix] = (
    (3.2409699419045226, -1.537383177570094, -0.4986107602930034),
    (-0.9692436362808796, 1.8759675015077202, 0.04155505740717559),
    (0.05563007969699366, -0.20397695888897652, 1.0569715142428786),
)
_BRADFORD_D50_TO_D65: Final[_Matrix] = (
    (0.955473421488075, -0.02309845494876471, 0.06325924320057072),
    (-0.0283697093338637, 1.0099953980813041, 0.021041441191917323),
    (0.012314014864481998, -0.020507649298898964, 1.330365926242124),
)


def parse_colour(token: Any) -> _Rgba | None:
    """A colour token or text in sRGB, or None when it is not a colour or its value is
    not known here (`currentColor`, an unconverted space)."""
    known = tinycss2.color3.parse_color(token)  # the common syntaxes, about twice as fast
    if isinstance(known, tuple):
        red, green, blue, alpha = known
        return _Rgba(float(red), float(green), float(blue), float(alpha))
    if known is not None:
        return None  # currentColor
    parsed = tinycss2.color4.parse_color(token)
    if parsed is None or isinstance(parsed, str):
        return None
    alpha = _number(parsed.alpha)
    rgb = _srgb(parsed)
    if rgb is None:
        return _Rgba(0.0, 0.0, 0.0, alpha) if alpha <= _INVISIBLE_ALPHA else None
    red, green, blue = (min(1.0, max(0.0, channel)) for channel in rgb)
    return _Rgba(red, green, blue, min(1.0, max(0.0, alpha)))


def _number(value: Any) -> float:
    """A coordinate as a float; `none` (None or NaN) counts as zero, as CSS converts it."""
    if value is None:
        return 0.0
    number = float(value)
    return 0.0 if math.isnan(number) else number


def _srgb(colour: Any) -> tuple[float, float, float] | None:
    space = colour.space
    coordinates = [_number(c) for c in colour.coordinates]
    if space == "srgb":
        return coordinates[0], coordinates[1], coordinates[2]
    if space in ("hsl", "hwb"):
        converted = tinycss2.color4.Color(space, coordinates, colour.alpha).to("srgb")
        return tuple(_number(c) for c in converted.coordinates)  # type: ignore[return-value]
    if space == "srgb-linear":
        return _encoded(coordinates)
    if space in ("xyz", "xyz-d65"):
        return _encoded(_apply(_XYZ_D65_TO_LINEAR_SRGB, coordinates))
    if space == "xyz-d50":
        return _from_d50(coordinates)
    if space in ("lab", "lch"):
        xyz = tinycss2.color4.Color(space, coordinates, colour.alpha).to("xyz-d50")
        return _from_d50([_number(c) for c in xyz.coordinates])
    if space in ("oklab", "oklch"):
        xyz = tinycss2.color4.Color(space, coordinates, colour.alpha).to("xyz-d65")
        return _encoded(_apply(_XYZ_D65_TO_LINEAR_SRGB, [_number(c) for c in xyz.coordinates]))
    return None


def _from_d50(xyz: Sequence[float]) -> tuple[float, float, float]:
    return _encoded(_apply(_XYZ_D65_TO_LINEAR_SRGB, _apply(_BRADFORD_D50_TO_D65, xyz)))


def _apply(matrix: _Matrix, vector: Sequence[float]) -> tuple[float, float, float]:
    x, y, z = vector[0], vector[1], vector[2]
    first, second, third = matrix
    return (
        first[0] * x + first[1] * y + first[2] * z,
        second[0] * x + second[1] * y + second[2] * z,
        third[0] * x + third[1] * y + third[2] * z,
    )


def _encoded(linear: Sequence[float]) -> tuple[float, float, float]:
    """sRGB's transfer curve (sign kept, as CSS Color 4 extends it below zero)."""

    def encode(value: float) -> float:
        magnitude = abs(value)
        if magnitude <= 0.0031308:
            return 12.92 * value
        return math.copysign(1.055 * magnitude ** (1 / 2.4) - 0.055, value)

    return encode(linear[0]), encode(linear[1]), encode(linear[2])


_HEX_DIGITS: Final = frozenset("0123456789abcdefABCDEF")
_ASCII_WHITESPACE: Final = "\t\n\f\r "


def legacy_colour(value: str) -> _Rgba | None:
    """A presentational colour attribute (`<font color>`) read by HTML's rules for
    parsing a legacy colour value, where `color="ffffff"` is white and `color="#fff"`
    too; None where HTML gives an error (empty, `transparent`)."""
    text = value.strip(_ASCII_WHITESPACE)
    if not text or text.lower() == "transparent":
        return None
    if text.isascii() and text.isalpha():
        named = parse_colour(text.lower())
        if named is not None and text.lower() != "currentcolor":
            return named
    if len(text) == 4 and text[0] == "#" and all(c in _HEX_DIGITS for c in text[1:]):
        red, green, blue = (int(digit, 16) * 17 / 255 for digit in text[1:])
        return _Rgba(red, green, blue, 1.0)
    text = "".join("00" if ord(c) > 0xFFFF else c for c in text)[:128]
    if text.startswith("#"):
        text = text[1:]
    text = "".join(c if c in _HEX_DIGITS else "0" for c in text)
    while not text or len(text) % 3:
        text += "0"
    length = len(text) // 3
    parts = [text[index * length : (index + 1) * length] for index in range(3)]
    if length > 8:
        parts = [part[length - 8 :] for part in parts]
        length = 8
    while length > 2 and all(part[0] == "0" for part in parts):
        parts = [part[1:] for part in parts]
        length -= 1
    if length > 2:
        parts = [part[:2] for part in parts]
    red, green, blue = (int(part, 16) / 255 for part in parts)
    return _Rgba(red, green, blue, 1.0)
