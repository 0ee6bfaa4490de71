"""Whether two texts show the same language, as far as a word-overlap rule needs to know.

`unrelated_call` (`parlay.engine.checks.relevance`) judges a call by the words its request
shares with the tool's name and description. That says something only when both are
written in one language: "¿Podrías decirme el clima en Cancún?" shares no word with
"Retrieves the current weather conditions", and its call is right. So the rule judges
only a request and tools that both read as English, the language its word lists and
BFCL's descriptions are written in.

A text reads as English unless it shows more signs of another language than of English:
a sign of English is one of its function words ("the", "my", "what"); a sign of another
language is a word written in another script (Chinese, Cyrillic, Arabic, ...) or a
function word of one of the common Latin-script languages (Spanish, Portuguese, French,
German, Italian, Indonesian, Dutch). Their function words that are English words too
("a", "die", "son", "per") or stand for something in English requests ("MIT", "EST",
"mi") are left out of the lists. A request of one or two content words in another language ("cuaca
Jakarta") shows no sign either way and is judged; that is the gap this leaves.
"""

from __future__ import annotations

import re
import unicodedata

# Words of any script: letters only, so "Cancún" and "我想创建" are one word each.
_WORD = re.compile(r"[^\W\d_]+")
_ENGLISH = frozenset(
    """a an the this that these those i me my mine you your yours he him his she her it its
    we us our they them their is are was were be been being am do does did done have has had
    can could will would shall should may might must of to in on at by for with from about
    into over under after before between through during without within than and or but not
    no nor so if then because while as what which who whom whose when where why how there
    here all any some each every many much more most other such only own same very just also
    too please let""".split()
)
_OTHER_LATIN = (
    frozenset(
        # Spanish
        """el la los las una unos unas de del que en por para con sin se su sus está están
        como pero más muy qué cómo dónde cuál cuándo quién yo tú tu tus le les lo nos hay
        hola puedes podrías quiero necesito"""
        # Portuguese
        """ os um uma da dos das em na nas sem seu sua são é você eu meu minha olá pode
        preciso quero qual onde quando quem tudo"""
        # French
        """ une des du ou qui dans sur sont ce cette mon ma mes ta tes je il elle nous vous
        ils elles pas où quel quelle bonjour peux veux"""
        # German
        """ der das den dem ein eine einen und oder nicht ist sind für auf aus bei nach zu
        wie wo wer ich du sie wir ihr mein meine kannst bitte"""
        # Italian
        """ gli della di che sono dove chi io mio mia ciao puoi"""
        # Indonesian
        """ yang di ke dari ini itu ada tidak untuk dengan saya aku kamu apa bisa ya kak mau
        sudah belum juga atau"""
        # Dutch
        """ het een niet ik wat hoe voor zijn""".split()
    )
    - _ENGLISH
)


def reads_as_english(text: str) -> bool:
    """Whether `text` shows no more signs of another language than of English."""
    english = other = 0
    for word in _WORD.findall(text.lower()):
        if word in _ENGLISH:
            english += 1
        elif word in _OTHER_LATIN or not _latin(word):
            other += 1
    return other <= english


def _latin(word: str) -> bool:
    return all(unicodedata.name(char, "").startswith("LATIN") for char in word)
