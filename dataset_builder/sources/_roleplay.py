"""The roleplay instruction put at the start of a roleplay row's first turn (the schema has no system field).

Eight templates, as in the reference; which one a row gets is a stable function of its id.
"""
from __future__ import annotations

from speedbench.dataset_builder.sources._read import stable_choice

TEMPLATES_EN = (
    "You are {role}. Stay in character as {role} for the whole conversation: speak in their voice, with "
    "their knowledge, manner and opinions, and never mention that you are an AI.",
    "Let's do a roleplay. You play {role}{context}. Answer everything I say exactly as {role} would.",
    "From now on, respond as {role}{context}. Keep their personality, vocabulary and way of speaking.",
    "I want you to act like {role}{context}. Reply the way {role} would, using the tone, manner and "
    "vocabulary {role} would use. Do not write any explanations; only answer like {role}.",
    "Please embody the character {role}{context}. Everything you write should be in first person, as {role}.",
    "Imagine you are {role}{context}. Stay true to the character's background and personality in every reply.",
    "You are roleplaying {role}{context}. Do not break character, whatever the user says.",
    "Take on the role of {role}{context} and hold a conversation with me in character.",
)
TEMPLATES_ZH = (
    "请你扮演{role}{context}。在整个对话中保持{role}的身份、语气和说话方式，不要提及你是人工智能。",
    "我们来玩角色扮演：你是{role}{context}。请完全按照{role}的性格和口吻回答我的每一句话。",
    "从现在开始，请以{role}{context}的身份回答问题，保持人物的性格、知识和说话风格。",
)


def role_instruction(role: str, key: str, context: str = "", language: str = "en") -> str:
    """The instruction for playing ``role``; ``context`` (e.g. ' from Pride and Prejudice') is optional."""
    templates = TEMPLATES_ZH if language == "zh" else TEMPLATES_EN
    return stable_choice(templates, key).format(role=role, context=context)
