"""Label sets more than one benchmark uses, defined once.

CSL's discipline field and FewCLUE's CSLDCP classify papers into the same 67
disciplines (学科) of the Chinese degree catalogue, with the same names and order,
so a model fine-tuned on one predicts the other's labels.
"""

# The 67 disciplines, as spelled in the CSL data and FewCLUE csldcp/labels_all.txt.
DISCIPLINES = (
    "计算机科学与技术", "信息与通信工程", "电子科学与技术", "控制科学与工程", "电气工程", "机械工程", "光学工程", "材料科学与工程", "冶金工程",
    "动力工程及工程热物理", "土木工程", "水利工程", "测绘科学与技术", "化学/化学工程与技术", "地质学/地质资源与地质工程", "矿业工程", "石油与天然气工程",
    "纺织科学与工程", "交通运输工程", "船舶与海洋工程", "航空宇航科学与技术", "兵器科学与技术", "核科学与技术", "农业工程", "环境科学与工程",
    "食品科学与工程", "建筑学", "力学", "数学", "物理学", "天文学", "地理学", "大气科学", "海洋科学", "地球物理学", "生物学/生物科学与工程",
    "作物学", "园艺学", "农业资源利用", "植物保护", "畜牧学/兽医学", "林学/林业工程", "水产", "基础医学/临床医学", "口腔医学",
    "公共卫生与预防医学", "中医学/中药学", "药学", "工商管理", "公共管理", "农林经济管理", "图书馆、情报与档案管理", "法学", "政治学", "社会学",
    "民族学", "教育学", "心理学", "体育学", "理论经济学", "应用经济学", "中国语言文学", "新闻传播学", "艺术学", "历史学", "军事学", "哲学")
