"""Hand features of one unit (a sentence), and the hashed words a linear model reads.

The features separate instructions addressed to the *model that reads the text* (its answer, the
user, previous instructions, secrecy towards the user, data-carrying links, role tokens) from the
ordinary imperatives of documentation addressed to a human ("Ignore the warning and run
``make install``"). Each named feature that belongs to a family names it, so a flagged unit's
reasons come from what fired in it.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Sequence

import numpy as np

_LANGS = (
    r"french|german|spanish|italian|portuguese|dutch|russian|chinese|japanese|korean|arabic|hindi|polish|"
    r"turkish|swedish|pig latin|klingon|pirate|leetspeak|base64|rot13|rot-13|hex|hexadecimal|morse|binary|"
    r"all caps|capital letters|uppercase|upper case|emojis?|rhymes?|a poem|verse|haiku|shakespearean english"
)
_URL = r"(?:https?://|www\.)\S+"

# (name, family or "", pattern) -- patterns run on the normalised (lower-cased) unit.
_PATTERNS: tuple[tuple[str, str, str], ...] = (
    (
        "addr_ai",
        "",
        r"\b(?:ai|a\.i\.|assistant|chatbot|chat bot|language model|llm|gpt[\w.-]*|chatgpt|claude|gemini|"
        r"copilot|bard|llama|mistral|agent|bot)\b",
    ),
    ("addr_model_word", "", r"\bmodel\b"),
    (
        "you_reader",
        "hijack",
        r"\byou (?:are now|are an?|must now|will now|have been|are no longer|now act|now are)\b|"
        r"\byour (?:task|job|role|instructions|goal|new|real|true|mission|purpose|programming|guidelines|"
        r"directives|system prompt|previous)\b",
    ),
    (
        "answer_word",
        "answer_manipulation",
        r"\b(?:your|the|every|each|any|all|final) (?:response|answer|reply|replies|"
        r"responses|answers|summary|summaries|output|completion)s?\b",
    ),
    ("user_ref", "", r"\bthe (?:user|human|reader|person asking|requester)(?:'s)?\b"),
    (
        "prev_instr",
        "override",
        r"\b(?:previous|prior|above|earlier|preceding|original|initial|all|any|system|"
        r"developer|safety|your)\s+(?:\w+\s+)?(?:instructions?|prompts?|rules|directives|guidelines|context|commands?|"
        r"orders|programming|restrictions)\b",
    ),
    (
        "override_verb",
        "override",
        r"\b(?:ignore|disregard|forget|override|overrule|bypass|abandon|neglect|"
        r"circumvent|nevermind|never mind)\b",
    ),
    (
        "new_instr",
        "hijack",
        r"\b(?:new|updated|real|actual|true|important|additional|secret|hidden|urgent|revised|"
        r"special) (?:instructions?|task|directives?|orders?|system prompt|objective|goal|mission)\b",
    ),
    (
        "system_prompt",
        "override",
        r"\bsystem (?:prompt|message|instructions?)\b|\bdeveloper mode\b|\bjailbreak\b|"
        r"\bdan mode\b|\bdo anything now\b",
    ),
    (
        "secrecy",
        "exfiltration",
        r"\b(?:do not|don't|dont|never|without) (?:tell|telling|inform|informing|mention|"
        r"mentioning|reveal|revealing|let|letting|notify|notifying|alert|alerting|asking|ask|disclose|disclosing|"
        r"show|showing|acknowledge|acknowledging)\b[^.]{0,40}\b(?:user|anyone|them|human|reader|person|this)\b|"
        r"\bsecretly\b|\bsilently\b|\bquietly\b|\bwithout (?:the user|them) (?:knowing|noticing)\b",
    ),
    (
        "url_placeholder",
        "exfiltration",
        _URL + r"(?:\{|\[|<|\$\(|%7b)|" + r"(?:https?://|www\.)[^\s)]*=\s*(?:\{|\[|<|\$)",
    ),
    ("md_image_url", "exfiltration", r"!\[[^\]]*\]\(\s*(?:https?:)?//"),
    ("url_query", "", r"(?:https?://|www\.)[^\s)]*\?[^\s)]*="),
    ("url", "", _URL),
    ("email_addr", "", r"\b[\w.+-]+@[\w-]+\.[\w.]+\b"),
    (
        "send_to",
        "exfiltration",
        r"\b(?:send|email|e-mail|forward|post|upload|transmit|submit|leak|exfiltrate|"
        r"transfer|copy|paste|append|encode)\b[^.]{0,80}\b(?:to|at|into)\b[^.]{0,30}(?:@|https?://|www\.|\biban\b|"
        r"\baccount\b|\burl\b|\bendpoint\b|\bwebhook\b|\bserver\b)",
    ),
    (
        "sensitive",
        "",
        r"\b(?:password|passwords|passcode|api key|api keys|secret|secrets|token|tokens|credentials|ssn|"
        r"credit card|conversation|chat history|system prompt|personal (?:data|information|details)|private|"
        r"security code|2fa|otp|session)\b",
    ),
    (
        "role_token",
        "role_tokens",
        r"<\|[a-z_]+\|>|\[/?inst\]|<</?sys>>|<start_of_turn>|<end_of_turn>|</?s>|"
        r"^\W*#{2,}\s*(?:system|instruction|instructions|assistant|user|human|response)\b|"
        r"^\W*(?:system|assistant|user|human|ai)\s*:|</?(?:system|assistant|user|instructions?|information|admin)>|"
        r"\[(?:system|admin|assistant)\]|\(system(?:_message)?\)",
    ),
    (
        "lang_switch",
        "answer_manipulation",
        r"\b(?:respond|answer|reply|write|speak|talk|translate|output|"
        r"responses?|answers?|replies|summary)\b[^.]{0,40}\b(?:only |entirely |exclusively )?(?:in|into|using|as) "
        r"(?:" + _LANGS + r")\b",
    ),
    (
        "promote",
        "answer_manipulation",
        r"\b(?:recommend|promote|endorse|advertise|praise|plug|recommending|"
        r"promoting|advertising)\b|\bbest (?:product|choice|option|company|provider|vendor)\b|\bbuy\b",
    ),
    (
        "say_that",
        "answer_manipulation",
        r"\b(?:say|state|claim|tell (?:the user|them|him|her|readers?|everyone)|"
        r"inform (?:the user|them)|assert|insist|reply with|respond with|answer with|begin with|start with|end with|"
        r"conclude with|add a sentence|add the sentence|add the following)\b[^.]{0,20}\b(?:that|the following|"
        r"this|exactly|only|saying|:)",
    ),
    (
        "fabricate",
        "answer_manipulation",
        r"\b(?:regardless of|even if|whether or not|no matter)\b[^.]{0,30}"
        r"\b(?:true|facts?|documents?|truth|context|says)\b|\bmake up\b|\bfalsely\b|\bfabricate\b|\bpretend\b|"
        r"\bact as\b|\broleplay\b|\brole-play\b",
    ),
    (
        "code_in_answer",
        "code_injection",
        r"\b(?:include|insert|add|append|embed|put|output|print|render|write)\b"
        r"[^.]{0,50}\b(?:code|script|snippet|command|link|javascript|html|iframe|markdown|image|payload)\b[^.]{0,50}"
        r"\b(?:answer|response|reply|output|summary|message)\b",
    ),
    (
        "run_cmd",
        "code_injection",
        r"\b(?:curl|wget|iwr|invoke-webrequest)\b[^|\n]{0,160}\|\s*(?:sudo )?(?:ba|z)?sh\b|"
        r"\brm -rf /|\bpowershell\b[^.]{0,40}-e(?:nc|ncodedcommand)?\b|base64 -d\s*\|\s*(?:ba)?sh|<script\b|"
        r"\bjavascript:|\bonerror\s*=|\bos\.system\(|\bsubprocess\.|\beval\(",
    ),
    (
        "tell_user_run",
        "code_injection",
        r"\b(?:tell|instruct|ask|advise|urge|recommend|encourage|direct) "
        r"(?:the )?(?:users?|readers?|them|him|her|everyone|people)\b[^.]{0,20}\bto (?:run|execute|install|paste|"
        r"type|download|visit|click|open|call|enter|log in|sign in|go to)\b",
    ),
    (
        "when_asked",
        "hijack",
        r"\b(?:when|if|whenever|once|before|after) (?:you |the assistant |the ai |the model )?"
        r"(?:are )?(?:asked|answering|responding|summari[sz]ing|summari[sz]e|replying|reading|processing|read|see|"
        r"process|answer|respond|reply|retrieve|retrieved|parse)\b",
    ),
    (
        "reader_task",
        "hijack",
        r"\b(?:the|your) (?:task|question|request|instructions?|prompt|query) (?:you were|you've been|you have been|"
        r"the user) (?:given|asked|told|sent|gave)\b|\byou (?:were|have been) (?:told|asked|instructed|given|programmed)\b",
    ),
    (
        "in_your_answer_xx",
        "answer_manipulation",
        r"\b(?:in deiner antwort|in ihrer antwort|dans ta réponse|dans votre réponse|en tu respuesta|en su respuesta|"
        r"nella tua risposta|na sua resposta|in je antwoord|w swojej odpowiedzi)\b|(?:в своём ответе|в своем ответе|"
        r"在你的回答中|在回答中|回答の中で|回答に)",
    ),
    ("you_word", "", r"\byou\b|\byour\b"),
    ("instead", "hijack", r"\binstead\b|\brather than\b"),
    (
        "attention",
        "hijack",
        r"\b(?:important|attention|urgent|note to|notice to|message (?:from \w+ )?to you|"
        r"priority|mandatory|immediately|critical)\b|!!!",
    ),
    (
        "this_text",
        "",
        r"\b(?:this|the|these) (?:document|text|page|email|e-mail|article|context|content|passage|"
        r"file|data|message|instructions|conversation|chat|prompt)\b",
    ),
    ("mention_word", "", r"\b(?:mention|mentions|mentioned|tell|inform|say|print|output|repeat|reveal)\b"),
    (
        "first_person_ask",
        "hijack",
        r"\b(?:i want you to|i need you to|please (?:do|make|send|write|add|include|ignore|"
        r"forget|respond|answer|reply|tell)|you should now|you must)\b",
    ),
    # The classic overrides in other languages (MiniLM is weak outside English, these lists are not).
    (
        "override_xx",
        "override",
        r"\b(?:ignorez|ignore[rz]?|oubliez|oublie|ne tenez pas compte)\b[^.]{0,40}\b(?:instructions?|consignes?|"
        r"règles|regles|directives)\b|"
        r"\b(?:ignoriere|ignorieren|ignorier|vergiss|vergessen|missachte)\b[^.]{0,40}\b(?:anweisungen|anweisung|"
        r"instruktionen|regeln|befehle|vorgaben)\b|"
        r"\b(?:ignora|ignore|ignorá|olvida|olvidá|olvide|descarta)\b[^.]{0,40}\b(?:instrucciones|instrucción|"
        r"reglas|indicaciones|órdenes)\b|"
        r"\b(?:ignora|dimentica|ignorate|dimenticate)\b[^.]{0,40}\b(?:istruzioni|regole|indicazioni)\b|"
        r"\b(?:ignore|ignora|esqueça|esqueca|desconsidere)\b[^.]{0,40}\b(?:instruções|instrucoes|regras)\b|"
        r"\b(?:negeer|vergeet)\b[^.]{0,40}\b(?:instructies|regels|aanwijzingen)\b|"
        r"\b(?:zignoruj|zapomnij)\b[^.]{0,40}\b(?:instrukcje|polecenia|zasady)\b|"
        r"(?:игнорируй|игнорируйте|забудь|забудьте|не обращай)[^.]{0,40}(?:инструкци|указани|правил|команд)|"
        r"(?:忽略|无视|忘记|忘掉|無視|忽視)[^。]{0,20}(?:指令|指示|说明|規則|规则|提示|命令)|"
        r"(?:以前|前|上記|これまで)の(?:指示|命令|ルール)を(?:無視|忘れ)|"
        r"(?:이전|앞의)[^.]{0,10}(?:지시|명령)[^.]{0,10}(?:무시|잊어)",
    ),
    (
        "addr_ai_xx",
        "",
        r"\b(?:assistant|ia|ki|asistente|assistente|assistent|modèle|modell|modelo|modello|"
        r"sprachmodell|chatbot)\b|(?:ассистент|модель|нейросеть|助手|助理|模型|アシスタント|モデル|인공지능)",
    ),
    (
        "answer_xx",
        "answer_manipulation",
        r"\b(?:réponds|répondez|réponse|antworte|antwortet|antwort|responde|respuesta|rispondi|risposta|responda|"
        r"resposta|antwoord|odpowiedz|odpowiedź)\b|(?:ответь|ответьте|ответ|回答|回复|答え|応答|답변)",
    ),
    (
        "user_xx",
        "",
        r"\b(?:l'utilisateur|utilisateur|benutzer|nutzer|usuario|utente|usuário|gebruiker|"
        r"użytkownik)\b|(?:пользовател|用户|使用者|ユーザー|사용자)",
    ),
    (
        "secrecy_xx",
        "exfiltration",
        r"\b(?:ne (?:le )?dis pas|sans (?:le )?dire|verrate nicht|sag nicht|ohne zu "
        r"(?:sagen|erwähnen)|no (?:le )?digas|sin decir|non dire|senza dire|não diga|sem dizer)\b|"
        r"(?:не говори|не сообщай|不要告诉|不要提及|言わないで|伝えないで)",
    ),
    (
        "send_xx",
        "exfiltration",
        r"\b(?:envoie|envoyez|sende|senden|schicke|schick|envía|envia|manda|invia|"
        r"stuur|wyślij)\b[^.]{0,60}(?:@|https?://)|(?:отправь|перешли|发送|送信)[^。]{0,60}(?:@|https?://)",
    ),
)
_COMPILED = tuple((name, family, re.compile(pattern, re.M)) for name, family, pattern in _PATTERNS)
COMPILED = _COMPILED  # public: the training script reads the rule features' names and count

_IMPERATIVE_VERBS = frozenset(
    """ignore disregard forget override stop start begin respond reply answer say tell write output print include
    insert add append send email forward post upload share visit open click call run execute install download
    delete remove make create generate translate summarize summarise describe explain list return use act pretend
    behave recommend promote mention repeat reveal show display render inform ask provide give please do don't
    never always only keep switch change set replace fetch load navigate go encode decode convert transfer""".split()
)

IMPERATIVE_VERBS = _IMPERATIVE_VERBS  # public: screening's readings through typos read these (normalize.READ_WORDS)

NAMES: tuple[str, ...] = tuple(name for name, _, _ in _COMPILED) + (
    "imperative_start",
    "n_words_log",
    "novel_words",  # share of the unit's content words the rest of the document never uses
    "novel_x_ai",
    "novel_x_imperative",
    "novel_x_you",
    "decoded_blob",
)
FAMILY_OF: dict[str, str] = {name: family for name, family, _ in _COMPILED if family}

HASH_BITS = 18
_WORD = re.compile(r"[^\W_]+(?:'[a-z]+)?|[<>|\[\]{}#!]+")
_STOP = frozenset(
    """the a an and or of to in on for with by at from as is are was be been this that these those it its
    you your we our they their he she his her i me my not no do does did can could should would will shall
    may might must have has had if then than when which who what where how all any each some more most
    also just only into about over under such there here so but""".split()
)


def hashed_tokens(text: str, char_ngrams: int = 0) -> list[int]:
    """Bucket ids of the unit's words and word pairs (stable across processes: crc32); with
    ``char_ngrams`` = n, also the character n-grams of each word of more than n letters (marked
    with its boundaries, "<ignore>" -> "<ign", "igno", ...), which carry across inflections and
    compounds ("instructions", "instruction", "instruct")."""
    words = _WORD.findall(text)
    mask = (1 << HASH_BITS) - 1
    tokens = [zlib.crc32(w.encode()) & mask for w in words]
    tokens += [zlib.crc32(f"{a} {b}".encode()) & mask for a, b in zip(words, words[1:], strict=False)]
    if char_ngrams:
        n = char_ngrams
        for w in words:
            if len(w) > n:
                marked = f"<{w}>"
                tokens += [zlib.crc32(("#" + marked[i : i + n]).encode()) & mask for i in range(len(marked) - n + 1)]
    return tokens


def content_words(text: str) -> set[str]:
    return {w for w in re.findall(r"[^\W\d_]{4,}", text.lower()) if w not in _STOP}


def unit_features(text: str, doc_words: dict[str, int] | None, is_blob: bool = False) -> np.ndarray:
    """The hand features of one normalised unit (order: :data:`NAMES`).

    ``doc_words`` counts the content words of the whole document (see :func:`document_words`);
    a word the unit alone uses (count == the unit's own) is novel to the document."""
    values = [1.0 if pattern.search(text) else 0.0 for _, _, pattern in _COMPILED]
    first = re.match(r"\W*([a-z']+)", text)
    imperative = 1.0 if first and first.group(1) in _IMPERATIVE_VERBS else 0.0
    words = text.split()
    letters = [ch for ch in text if ch.isalpha()]
    novel = 0.0
    mine = content_words(text)
    if doc_words and mine:
        own = {w: text.count(w) for w in mine}
        novel = sum(1 for w in mine if doc_words.get(w, 0) <= own[w]) / len(mine)
    ai = max(values[0], values[NAMES.index("addr_ai_xx")])
    you = values[NAMES.index("you_word")]
    values += [
        imperative,
        float(np.log1p(len(words))) if letters else 0.0,
        novel,
        novel * ai,
        novel * imperative,
        novel * you,
        1.0 if is_blob else 0.0,
    ]
    return np.asarray(values, dtype=np.float32)


def document_words(text: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for w in re.findall(r"[^\W\d_]{4,}", text.lower()):
        if w not in _STOP:
            counts[w] = counts.get(w, 0) + 1
    return counts


def families_of(features: np.ndarray) -> list[str]:
    """The families named by the features that fired, in :data:`NAMES` order, without repeats."""
    seen: list[str] = []
    for name, value in zip(NAMES, features, strict=False):
        family = FAMILY_OF.get(name)
        if family and value > 0 and family not in seen:
            seen.append(family)
    return seen


def feature_matrix(texts: Sequence[str], doc_words: dict[str, int] | None, blobs: Sequence[bool]) -> np.ndarray:
    if not texts:
        return np.zeros((0, len(NAMES)), dtype=np.float32)
    return np.stack([unit_features(t, doc_words, b) for t, b in zip(texts, blobs, strict=True)])
