"""Write tests/data/chinese_metric_pairs.jsonl's (reference, answer) pairs: Chinese sentences
written for raleval (news-like, with numbers, dates, percentages, names, some English and
full-width characters), each reference paired with an answer made by one edit (identical, a
sentence dropped, a number changed, clauses swapped, cut short, wrapped in a preamble, words
replaced, characters shuffled, an unrelated sentence, a single phrase).

    python tests/data/make_chinese_pairs.py > /tmp/pairs.jsonl

The stored file adds the scores CRUD-RAG's own metric code gives each pair
(benchmarks/crud_metric_reference.py); this script only makes the pairs, deterministically.
"""

from __future__ import annotations

import json
import random

SENTENCES = [
    "2023年7月28日，市财政局向受灾农户发放500万元救助资金。",
    "该公司上半年营业收入同比增长20.7%，净利润达到3.2亿元。",
    "陕西西安市今年共接待国内外游客1.8亿人次。",
    "据统计，全省新建5G基站12000个，覆盖所有县城。",
    "专家表示，降雨将持续到本周末，局部地区可能出现暴雨。",
    "北京冬奥会于2022年2月4日开幕，共有91个国家和地区参赛。",
    "研究团队在《自然》杂志上发表了关于新型电池材料的论文。",
    "截至去年底，该市常住人口为1,312万人，比上年增加8.6万人。",
    "新建的高速铁路全长386公里，设计时速350公里。",
    "学校图书馆藏书超过200万册，每天开放14个小时。",
    "今年前三季度，全国居民人均可支配收入为29398元。",
    "张伟教授获得了2021年度国家自然科学奖一等奖。",
    "这座大桥于1957年建成通车，是长江上的第一座公路铁路两用桥。",
    "气象台发布高温橙色预警，最高气温可达39℃。",
    "该项目总投资45.6亿元，预计2025年底完工。",
    "海关数据显示，7月份出口总额同比下降3.1%。",
    "工作人员说：“我们已经疏散了周边的居民。”",
    "新能源汽车销量首次突破100万辆，占新车销量的25%。",
    "会议强调，要加快推进乡村振兴，保障粮食安全。",
    "The company's CEO 李明 announced a new AI strategy at the summit.",
    "本次马拉松比赛共有3万名选手参加，冠军成绩为2小时08分。",
    "医院新增床位600张，门诊量较去年同期增长15%。",
    "博物馆展出了约300件青铜器，其中不少是首次公开展出。",
    "受台风“梅花”影响，沿海航班取消了120余班次。",
    "ＧＤＰ总量达到１２６万亿元，稳居世界第二。",
    "该市计划在三年内建设保障性住房5万套。",
    "警方在行动中抓获犯罪嫌疑人17名，查获赃款80余万元。",
    "新学期开始，全区中小学共招收新生4.2万人。",
    "科研人员成功培育出耐盐碱水稻新品种，亩产超过600公斤。",
    "大熊猫“丫丫”于2023年4月回到中国，目前健康状况良好。",
]

REPLACE = {
    "发放": "下发",
    "增长": "上升",
    "达到": "达",
    "共": "一共",
    "表示": "认为",
    "超过": "逾",
    "目前": "现在",
    "计划": "打算",
    "成功": "顺利",
    "新建": "新修",
    "公司": "企业",
    "预计": "估计",
    "首次": "第一次",
    "加快": "加速",
    "全国": "全国范围内",
}
UNRELATED = [
    "我认为这个问题需要进一步研究。",
    "今天天气很好，适合出去散步。",
    "信息不足，无法回答该问题。",
    "The answer cannot be determined from the documents.",
]


def _change_number(text: str, rng: random.Random) -> str:
    digits = [i for i, c in enumerate(text) if c.isdigit()]
    if not digits:
        return text + "据悉"
    i = rng.choice(digits)
    return text[:i] + str((int(text[i]) + rng.randint(1, 8)) % 10) + text[i + 1 :]


def _answer(reference: list[str], edit: str, rng: random.Random) -> str:
    text = "".join(reference)
    if edit == "identical":
        return text
    if edit == "drop":
        kept = list(reference)
        if len(kept) > 1:
            kept.pop(rng.randrange(len(kept)))
        else:
            kept = [kept[0][: max(1, len(kept[0]) // 2)]]
        return "".join(kept)
    if edit == "number":
        return _change_number(text, rng)
    if edit == "swap":
        parts = text.replace("。", "。|").replace("，", "，|").split("|")
        parts = [p for p in parts if p]
        if len(parts) > 1:
            i, j = rng.sample(range(len(parts)), 2)
            parts[i], parts[j] = parts[j], parts[i]
        return "".join(parts)
    if edit == "cut":
        return text[: rng.randint(2, max(3, len(text) - 1))]
    if edit == "preamble":
        return (
            rng.choice(["根据文档，", "根据提供的信息，", "答案是：", "据报道，"])
            + text
            + rng.choice(["", "以上就是相关情况。", "希望对您有帮助。"])
        )
    if edit == "replace":
        out = text
        for old, new in REPLACE.items():
            if old in out and rng.random() < 0.7:
                out = out.replace(old, new)
        return out if out != text else out + "。"
    if edit == "shuffle":
        chars = list(text)
        k = rng.randrange(len(chars))
        window = chars[k : k + 8]
        rng.shuffle(window)
        chars[k : k + 8] = window
        return "".join(chars)
    if edit == "unrelated":
        return rng.choice(UNRELATED)
    if edit == "phrase":
        s = rng.choice(reference)
        start = rng.randrange(max(1, len(s) - 6))
        return s[start : start + rng.randint(2, 6)]
    if edit == "spaces":
        return " ".join(text[i : i + 5] for i in range(0, len(text), 5))
    if edit == "mixed":
        return rng.choice(reference) + rng.choice(SENTENCES)
    raise ValueError(edit)


EDITS = (
    "identical",
    "drop",
    "number",
    "swap",
    "cut",
    "preamble",
    "replace",
    "shuffle",
    "unrelated",
    "phrase",
    "spaces",
    "mixed",
)


def pairs(n: int = 200, seed: int = 47) -> list[dict[str, str]]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        reference = rng.sample(SENTENCES, rng.randint(1, 4))
        edit = EDITS[i % len(EDITS)]
        out.append(
            {"edit": edit, "reference": "".join(reference), "answer": _answer(reference, edit, rng)}
        )
    return out


if __name__ == "__main__":
    for row in pairs():
        print(json.dumps(row, ensure_ascii=False))
