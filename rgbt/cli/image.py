"""``rgbt image``: normalize a thermal frame, read temperatures, colourize for display."""

from __future__ import annotations

import argparse
from pathlib import Path

from rgbt.errors import ImageError


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("image", help="thermal image preprocessing: normalize, temperature, colorize")
    image_sub = parser.add_subparsers(dest="image_cmd", metavar="COMMAND")

    p = image_sub.add_parser("normalize", help="percentile rescale (+ CLAHE) to float32 in [0,1]")
    p.add_argument("input", metavar="IN", help="16-bit PNG/TIFF, .npy or FLIR .fff")
    p.add_argument("output", metavar="OUT", help="float32 .npy or .tif/.tiff, same size as IN")
    p.add_argument("--low", type=float, default=1.0, help="low percentile mapped to 0 (default 1)")
    p.add_argument("--high", type=float, default=99.0, help="high percentile mapped to 1 (default 99)")
    p.add_argument("--clahe", dest="clahe", action="store_true", default=True,
                   help="apply CLAHE after the rescale (default, as CART)")
    p.add_argument("--no-clahe", dest="clahe", action="store_false", help="percentile rescale only")
    p.add_argument("--json", action="store_true", help="print what was done as JSON")
    p.set_defaults(func=_normalize)

    p = image_sub.add_parser("temperature", help="degrees C at a pixel / region of a radiometric frame (.fff)")
    p.add_argument("input", metavar="IN", help="radiometric FLIR .fff")
    p.add_argument("--x", type=int, help="pixel column")
    p.add_argument("--y", type=int, help="pixel row")
    p.add_argument("--region", type=int, nargs=4, metavar=("X0", "Y0", "X1", "Y1"),
                   help="rectangle, x1/y1 exclusive")
    p.add_argument("--no-atmosphere", action="store_true",
                   help="skip the emissivity / atmosphere / window correction (black body, no path)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=_temperature)

    p = image_sub.add_parser("colorize", help="normalize and colour a thermal frame into an RGB PNG")
    p.add_argument("input", metavar="IN", help="16-bit PNG/TIFF, .npy or FLIR .fff")
    p.add_argument("output", metavar="OUT", help="output .png")
    from rgbt.image.colormap import COLORMAPS

    p.add_argument("--cmap", default="ironbow", choices=COLORMAPS, help="colormap (default ironbow)")
    p.add_argument("--colorbar", action="store_true",
                   help="add a labelled colorbar (degrees C for radiometric inputs, else counts)")
    p.add_argument("--low", type=float, default=1.0, help="low percentile (default 1)")
    p.add_argument("--high", type=float, default=99.0, help="high percentile (default 99)")
    p.add_argument("--clahe", action="store_true", help="apply CLAHE (the colorbar then labels the rescale bounds)")
    p.set_defaults(func=_colorize)

    p = image_sub.add_parser("rectify", help="rectify one thermal/colour pair onto the pair canvas (960x600)",
                             description="Rectify one RGB-thermal pair with the stack's pair calibration or a "
                                         "Kalibr camchain (cam0 colour, cam1 thermal): corresponding points end up "
                                         "on the same row; writes DIR/thermal.png (uint16) and DIR/color.png.")
    p.add_argument("thermal", metavar="THERMAL", help="thermal frame at native size (16-bit PNG/TIFF, .npy or .fff)")
    p.add_argument("color", metavar="COLOR", help="colour frame at native size (PNG/JPEG)")
    p.add_argument("--out", required=True, metavar="DIR", help="output directory (created)")
    p.add_argument("--stack", metavar="YAML", help="stack YAML with the pair (default calib/stack.yaml)")
    p.add_argument("--camchain", metavar="YAML", help="Kalibr camchain instead of the stack's pair")
    p.add_argument("--pair", default="color_thermal", help="stack pair (default color_thermal)")
    p.add_argument("--json", action="store_true", help="print what was done as JSON")
    p.set_defaults(func=_rectify)



def _normalize(args: argparse.Namespace) -> int:
    from rgbt.image.io import read_thermal, write_float_image
    from rgbt.image.normalize import NormalizeOptions, Normalizer
    from rgbt.output import print_json

    src = read_thermal(args.input)
    normalizer = Normalizer(NormalizeOptions(low=args.low, high=args.high, clahe=args.clahe))
    lo, hi = normalizer.bounds(src.frame)
    out = normalizer.apply(src.frame, lo, hi)
    write_float_image(args.output, out)
    if args.json:
        print_json({"input": str(args.input), "output": str(args.output), "shape": list(out.shape),
                    "dtype": str(out.dtype), "bounds": [lo, hi], "options": normalizer.options.describe(),
                    "min": float(out.min()), "max": float(out.max())})
    else:
        print(f"{args.output}: {out.shape[1]}x{out.shape[0]} float32, bounds {lo:.2f}..{hi:.2f}, "
              f"clahe={'on' if args.clahe else 'off'}")
    return 0


def _temperature(args: argparse.Namespace) -> int:
    from rgbt.image.io import read_thermal
    from rgbt.image.radiometry import region_stats, temperature_at
    from rgbt.output import print_json

    if (args.x is None) != (args.y is None):
        raise ImageError("--x and --y go together")
    if args.x is not None and args.region is not None:
        raise ImageError("give either --x/--y or --region, not both")
    src = read_thermal(args.input)
    fff = src.fff
    if fff is None:
        raise ImageError(f"{args.input}: not a radiometric input (no Planck constants); temperatures need a "
                         "FLIR .fff frame")
    temps = fff.celsius(atmospheric=not args.no_atmosphere)
    result: dict = {"input": str(args.input), "unit": "degC", "atmospheric_correction": not args.no_atmosphere,
                    "params": fff.params.describe(), "camera": fff.camera}
    if args.x is not None:
        result["pixel"] = {"x": args.x, "y": args.y, "counts": int(src.frame[args.y, args.x])
                           if 0 <= args.y < src.frame.shape[0] and 0 <= args.x < src.frame.shape[1] else None,
                           "temperature_c": temperature_at(temps, args.x, args.y)}
    elif args.region is not None:
        result["region"] = {"box": list(args.region), **region_stats(temps, region=tuple(args.region)).to_dict()}
    else:
        result["image"] = region_stats(temps).to_dict()
    if args.json:
        print_json(result)
    else:
        for key in ("pixel", "region", "image"):
            if key in result:
                print(f"{key}: " + ", ".join(f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}"
                                             for k, v in result[key].items()))
    return 0


def _colorize(args: argparse.Namespace) -> int:
    import cv2

    from rgbt.image.colormap import apply_colormap, with_colorbar
    from rgbt.image.io import read_thermal
    from rgbt.image.normalize import NormalizeOptions, Normalizer

    if Path(args.output).suffix.lower() != ".png":
        raise ImageError(f"{args.output}: colorize writes a .png")
    src = read_thermal(args.input)
    normalizer = Normalizer(NormalizeOptions(low=args.low, high=args.high, clahe=args.clahe))
    lo, hi = normalizer.bounds(src.frame)
    rgb = apply_colormap(normalizer.apply(src.frame, lo, hi), args.cmap)
    if args.colorbar:
        if src.fff is not None:
            import numpy as np

            from rgbt.image.radiometry import counts_to_celsius

            t_lo, t_hi = counts_to_celsius(np.array([lo, hi], dtype=np.float64), src.fff.params)
            rgb = with_colorbar(rgb, float(t_lo), float(t_hi), name=args.cmap, unit="degC")
        else:
            rgb = with_colorbar(rgb, lo, hi, name=args.cmap, unit="counts")
    from rgbt.image.io import write_image

    write_image(args.output, cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR))
    print(f"{args.output}: {rgb.shape[1]}x{rgb.shape[0]} {args.cmap}")
    return 0


def _rectify(args: argparse.Namespace) -> int:
    import cv2

    from rgbt.bag.extract import stack_for
    from rgbt.bag.pairs import rectifier_for
    from rgbt.image.io import read_thermal, write_image
    from rgbt.output import print_json

    thermal = read_thermal(args.thermal).frame
    if not Path(args.color).is_file():
        raise ImageError(f"{args.color}: no such file (expected a colour PNG/JPEG)")
    bgr = cv2.imread(str(args.color), cv2.IMREAD_COLOR)
    if bgr is None:
        raise ImageError(f"{args.color}: not a readable colour image (expected PNG/JPEG)")
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise ImageError(f"{out}: exists and is not a directory")
    rect = rectifier_for(stack_for(args.stack), args.pair, args.camchain)
    color_r, thermal_r = rect.rectify(cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB), thermal)
    out.mkdir(parents=True, exist_ok=True)
    write_image(out / "thermal.png", thermal_r)
    write_image(out / "color.png", cv2.cvtColor(color_r, cv2.COLOR_RGB2BGR))
    result = {"thermal": str(out / "thermal.png"), "color": str(out / "color.png"), **rect.describe()}
    if args.json:
        print_json(result)
    else:
        print(f"{out}: color.png and thermal.png rectified onto {rect.size[0]}x{rect.size[1]} "
              f"(baseline {rect.baseline_m * 100:.1f} cm)")
    return 0
