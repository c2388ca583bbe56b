"""The docs environment at CRUD-RAG's scale: index build, open and query latency.

Generates a seeded corpus of Chinese news-like documents (80,000 by default, about 730
characters each: the mean length of CRUD-RAG's released news documents), or takes an existing
one (``--corpus``), then measures in fresh processes: the build (jieba segmentation in worker
processes, bm25s indexing, saving; wall and CPU seconds, peak memory of the largest process),
the open of the saved index (memory-mapped), and p50/p95 latency of ``search`` and ``read``
through the real tool path over seeded queries.

    python benchmarks/docs_env.py [--docs 80000] [--queries 300] [--corpus PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import quantile, write_json

# words of a news register, so jieba segments text shaped like CRUD-RAG's
_WORDS_TEXT = (
    "记者 报道 今年 上半年 同比增长 百分点 市政府 发布 数据 显示 企业 项目 投资 亿元 万元 "
    "居民 消费 市场 经济 发展 建设 城市 农村 交通 铁路 公路 机场 港口 医院 学校 大学 学生 "
    "教师 科技 创新 研发 产业 制造业 服务业 旅游 文化 体育 比赛 冠军 选手 活动 举办 开幕 "
    "会议 代表 委员 政策 措施 改革 开放 合作 协议 签署 国际 国家 地区 省份 县城 乡镇 村民 "
    "农业 粮食 生产 收入 就业 岗位 保障 安全 环境 保护 治理 污水 森林 河流 湖泊 气候 能源 "
    "电力 新能源 汽车 销量 出口 进口 贸易 金融 银行 贷款 利率 股票 基金 保险 公司 集团 "
    "董事长 总经理 负责人 专家 表示 认为 指出 强调 预计 计划 完成 启动 推进 加快 提升 "
    "提高 降低 增加 减少 超过 达到 突破 创新高 首次 全面 重点 主要 重要 进一步 持续 稳定"
)
_WORDS = _WORDS_TEXT.split()
_PLACES_TEXT = "青林 南川 北岭 云溪 安平 槐江 柳城 桑田 渔湾 石桥 明镜 金橡 东湖 西陵"
_PLACES = _PLACES_TEXT.split()


def _sentence(rng: random.Random) -> str:
    words = rng.choices(_WORDS, k=rng.randint(8, 16))
    words.insert(rng.randrange(len(words)), rng.choice(_PLACES) + rng.choice(("市", "县", "镇")))
    words.insert(
        rng.randrange(len(words)), f"{rng.randint(2, 9999)}{rng.choice(('人', '万元', '%'))}"
    )
    return "".join(words) + "。"


def generate(path: Path, n: int, seed: int = 0) -> None:
    rng = random.Random(seed)
    with path.open("w", encoding="utf-8") as fh:
        for i in range(n):
            text = ""
            while len(text) < rng.randint(400, 1060):
                text += _sentence(rng)
            title = rng.choice(_PLACES) + "".join(rng.choices(_WORDS, k=3))
            fh.write(json.dumps({"id": f"n{i:06d}", "title": title, "text": text},
                                ensure_ascii=False) + "\n")  # fmt: skip


_CHILD = """
import json, resource, sys, time
t0 = time.perf_counter(); c0 = time.process_time()
from raleval.envs.docs import CorpusIndex
index = CorpusIndex(__import__("pathlib").Path(sys.argv[1]), rebuild=sys.argv[2] == "build")
own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
kids = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"wall_s": time.perf_counter() - t0,
                  "cpu_s": time.process_time() - c0 + kids.ru_utime + kids.ru_stime,
                  "peak_rss_mb": max(own, kids.ru_maxrss) / 1024, "docs": len(index)}))
"""


def _child(corpus: Path, mode: str) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, str(corpus), mode],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    return json.loads(out.stdout.strip().splitlines()[-1])


def query_latency(corpus: Path, n: int, seed: int = 1) -> dict:
    from raleval import registry

    env = registry.envs.get("docs")(corpus=str(corpus))
    rng = random.Random(seed)
    search, read, hits = [], [], 0
    for _ in range(n):
        query = rng.choice(_PLACES) + "".join(rng.choices(_WORDS, k=rng.randint(2, 5)))
        t = time.perf_counter()
        result = env.call_sync("search", {"query": query})
        search.append(time.perf_counter() - t)
        if result.data:
            hits += 1
            t = time.perf_counter()
            env.call_sync("read", {"doc_id": result.data[0]["doc_id"]})
            read.append(time.perf_counter() - t)
    ms = lambda xs, q: round(1000 * quantile(sorted(xs), q), 2)  # noqa: E731
    return {
        "queries": n,
        "with_hits": hits,
        "search_ms": {"p50": ms(search, 0.5), "p95": ms(search, 0.95)},
        "read_ms": {"p50": ms(read, 0.5), "p95": ms(read, 0.95)},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=80_000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument(
        "--corpus", type=Path, help="measure this corpus instead of a generated one"
    )
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        corpus = args.corpus or Path(tmp) / "news.jsonl"
        if args.corpus is None:
            generate(corpus, args.docs)
        size_mb = corpus.stat().st_size / 2**20
        build = _child(corpus, "build")
        opened = _child(corpus, "open")
        latency = query_latency(corpus, args.queries)
        index_mb = (
            sum(f.stat().st_size for f in corpus.with_name(corpus.name + ".bm25").iterdir()) / 2**20
        )
    payload = {
        "corpus": str(args.corpus) if args.corpus else f"generated, {args.docs} documents",
        "corpus_mb": round(size_mb, 1),
        "index_mb": round(index_mb, 1),
        "cpus": os.cpu_count(),
        "load_avg_1m": os.getloadavg()[0],
        "build": build,
        "open": opened,
        **latency,
    }
    print(json.dumps(payload, indent=2))
    write_json("docs_env", payload, args.out)


if __name__ == "__main__":
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    main()
