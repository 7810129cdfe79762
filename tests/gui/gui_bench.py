"""A small deterministic python benchmark for the GUI tests: a latency landscape over three slots,
with a broken corner (unroll=16 with vec=4 raises, like a register-pressure failure)."""

SPACE = {"block_size": [32, 64, 128, 256, 512, 1024], "unroll": [1, 2, 4, 8, 16], "vec": [1, 2, 4]}
GROUPS = {"block_size": "launch", "unroll": "compute", "vec": "memory"}
RESTRICTIONS = ["block_size * unroll <= 8192"]


def measure(config: dict) -> dict:
    block, unroll, vec = config["block_size"], config["unroll"], config["vec"]
    if unroll == 16 and vec == 4:
        raise RuntimeError(f"too many resources requested for launch (unroll={unroll}, vec={vec})")
    latency = 1.0 + abs(block - 256) / 256 + 0.3 / unroll + 0.2 / vec + 0.05 * unroll
    memory = 8.0 + block / 64 + 4 * vec
    quality = 1.0 - 0.002 * unroll
    return {"latency_ms": latency, "memory_mb": memory, "quality": quality, "throughput_gbs": 400.0 / latency}
