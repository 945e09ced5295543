"""Label ids of the CLUE/FewCLUE files and the Chinese words the models generate.

Targets are always these words, never ids (why: an id like `108` carries no
meaning a pretrained model can use); `LABELS[task]` maps the id found in the
files to its word and `label_id` maps a word back for metrics and submissions.
All words survive a round trip through the Chinese SentencePiece vocabulary.
"""

from __future__ import annotations

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
CSLDCP = (
    "计算机科学与技术", "信息与通信工程", "电子科学与技术", "控制科学与工程", "电气工程", "机械工程", "光学工程", "材料科学与工程", "冶金工程",
    "动力工程及工程热物理", "土木工程", "水利工程", "测绘科学与技术", "化学/化学工程与技术", "地质学/地质资源与地质工程", "矿业工程", "石油与天然气工程",
    "纺织科学与工程", "交通运输工程", "船舶与海洋工程", "航空宇航科学与技术", "兵器科学与技术", "核科学与技术", "农业工程", "环境科学与工程",
    "食品科学与工程", "建筑学", "力学", "数学", "物理学", "天文学", "地理学", "大气科学", "海洋科学", "地球物理学", "生物学/生物科学与工程",
    "作物学", "园艺学", "农业资源利用", "植物保护", "畜牧学/兽医学", "林学/林业工程", "水产", "基础医学/临床医学", "口腔医学",
    "公共卫生与预防医学", "中医学/中药学", "药学", "工商管理", "公共管理", "农林经济管理", "图书馆、情报与档案管理", "法学", "政治学", "社会学",
    "民族学", "教育学", "心理学", "体育学", "理论经济学", "应用经济学", "中国语言文学", "新闻传播学", "艺术学", "历史学", "军事学", "哲学")

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
