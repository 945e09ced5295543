"""Label ids of the CLUE/FewCLUE files and the Chinese words the models generate.

Targets are always these words, never ids (why: an id like `108` carries no
meaning a pretrained model can use); `LABELS[task]` maps the id found in the
files to its word and `label_id` maps a word back for metrics and submissions.
All words survive a round trip through the Chinese SentencePiece vocabulary.
"""

from __future__ import annotations

from crosstask.tasks.common import label_sets

SIMILARITY = {"0": "不同", "1": "相同"}
NLI = {"entailment": "蕴含", "neutral": "中立", "contradiction": "矛盾"}
COREFERENCE = {"true": "是", "false": "否"}
KEYWORDS = {"1": "真", "0": "假"}
SENTIMENT = {"Positive": "正面", "Negative": "负面"}

# TNEWS: id -> (label_desc as in the files, Chinese name from FewCLUE label_index2en2zh.json).
TNEWS = {
    "100": ("news_story", "故事"), "101": ("news_culture", "文化"),
    "102": ("news_entertainment", "娱乐"), "103": ("news_sports", "体育"),
    "104": ("news_finance", "财经"), "106": ("news_house", "房产"), "107": ("news_car", "汽车"),
    "108": ("news_edu", "教育"), "109": ("news_tech", "科技"), "110": ("news_military", "军事"),
    "112": ("news_travel", "旅游"), "113": ("news_world", "国际"), "114": ("news_stock", "股票"),
    "115": ("news_agriculture", "农业"), "116": ("news_game", "电竞"),
}

# IFLYTEK: the 119 app categories in id order (FewCLUE label_id2des_desc2short.py);
# spellings verbatim, e.g. `语言(非英语)` with ASCII parentheses and `体育咨讯`.
IFLYTEK_NAMES = (
    "打车", "地图导航", "免费WIFI", "租车", "同城服务", "快递物流", "婚庆", "家政", "公共交通", "政务",
    "社区服务", "薅羊毛", "魔幻", "仙侠", "卡牌", "飞行空战", "射击游戏", "休闲益智", "动作类", "体育竞技",
    "棋牌中心", "经营养成", "策略", "MOBA", "辅助工具", "约会社交", "即时通讯", "工作社交", "论坛圈子",
    "婚恋社交", "情侣社交", "社交工具", "生活社交", "微博博客", "新闻", "漫画", "小说", "技术", "教辅",
    "问答交流", "搞笑", "杂志", "百科", "影视娱乐", "求职", "兼职", "视频", "短视频", "音乐", "直播",
    "电台", "K歌", "成人", "中小学", "职考", "公务员", "英语", "视频教育", "高等教育", "成人教育", "艺术",
    "语言(非英语)", "旅游资讯", "综合预定", "民航", "铁路", "酒店", "行程管理", "民宿短租", "出国", "工具",
    "亲子儿童", "母婴", "驾校", "违章", "汽车咨询", "汽车交易", "日常养车", "行车辅助", "租房", "买房",
    "装修家居", "电子产品", "问诊挂号", "养生保健", "医疗服务", "减肥瘦身", "美妆美业", "菜谱", "餐饮店",
    "体育咨讯", "运动健身", "支付", "保险", "股票", "借贷", "理财", "彩票", "记账", "银行", "美颜",
    "影像剪辑", "摄影修图", "相机", "绘画", "二手", "电商", "团购", "外卖", "电影票务", "社区超市",
    "购物咨询", "笔记", "办公", "日程管理", "女性", "经营", "收款", "其他")

# CSLDCP: the 67 disciplines (FewCLUE csldcp/labels_all.txt), the same names and order as
# the CSL tasks' discipline field, so CSLDCP and `摘要->学科` share one label set.
CSLDCP = label_sets.DISCIPLINES

# Task kind -> {label id as a string: target word}.
LABELS: dict[str, dict[str, str]] = {
    "pair": SIMILARITY,
    "nli": NLI,
    "wsc": COREFERENCE,
    "csl": KEYWORDS,
    "eprstmt": SENTIMENT,
    "tnews": {k: zh for k, (_, zh) in TNEWS.items()},
    "iflytek": {str(i): name for i, name in enumerate(IFLYTEK_NAMES)},
    "csldcp": {d: d for d in CSLDCP},  # CSLDCP's label ids are the names themselves
}


LABELS_INVERSE = {kind: {word: key for key, word in labels.items()}
                  for kind, labels in LABELS.items()}


def words(kind: str) -> tuple[str, ...]:
  """The target words of a label kind, in id order."""
  return tuple(LABELS[kind].values())


def label_id(kind: str, word: str) -> str | None:
  """The file's label id for a generated word (stripped), None when it is no label."""
  return LABELS_INVERSE[kind].get(word.strip())
