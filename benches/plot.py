"""Turn the benchmark's JSON (cpp-tests/bench/launch_bench.cu) and, optionally, the cuda.core
reference JSON (benches/cuda_core_reference.py) into an SVG bar chart. No dependencies.
    python3 benches/plot.py bench.json [cuda_core.json] > docs/launch-overhead.svg
"""
import json
import sys


def main():
    bench = json.load(open(sys.argv[1]))
    ref = json.load(open(sys.argv[2])) if len(sys.argv) > 2 else None
    rows = [(v["name"], v["median_us"], v["ratio"], v["baseline"] == "") for v in bench["variants"] if v["group"] in ("launch", "cluster")]
    if ref:
        rows.append(("cuda.core launch (Python)", ref["cuda_core_launch_us"], None, False))
    w, bar_h, gap, left = 860, 22, 8, 300
    h = 70 + len(rows) * (bar_h + gap)
    top = max(r[1] for r in rows) * 1.15
    scale = (w - left - 120) / top
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="13">',
           f'<rect width="{w}" height="{h}" fill="white"/>',
           f'<text x="{w / 2}" y="22" text-anchor="middle" font-size="15">Host time per launch, empty kernel ({bench["device"]}, median of {bench["rounds"]} rounds)</text>',
           f'<text x="{w / 2}" y="42" text-anchor="middle" fill="#555">lower is better; ratios are to the raw call of the same API, measured within each round</text>']
    y = 58
    for name, us, ratio, raw in rows:
        color = "#888888" if raw else ("#76b900" if ratio is not None else "#4a7ab5")
        out.append(f'<text x="{left - 8}" y="{y + bar_h * 0.72}" text-anchor="end">{name}</text>')
        out.append(f'<rect x="{left}" y="{y}" width="{us * scale:.1f}" height="{bar_h}" fill="{color}"/>')
        label = f"{us:.2f} us" + (f"  ({ratio:.3f}x)" if ratio is not None and not raw else "")
        out.append(f'<text x="{left + us * scale + 6:.1f}" y="{y + bar_h * 0.72}">{label}</text>')
        y += bar_h + gap
    out.append("</svg>")
    print("\n".join(out))


if __name__ == "__main__":
    main()
