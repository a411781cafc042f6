"""Networks, training, evaluation, agents and GTP.

``load_agent(path)`` reads an agent package; ``build_model(name, num_planes, board_size)`` builds a
network; ``gotk.models.train.train`` and ``gotk.models.evaluate.evaluate`` run training and evaluation.
"""

from gotk.models.agent import Agent, AgentError, load_agent, save_agent
from gotk.models.networks import MODELS, build_model

__all__ = ["Agent", "AgentError", "MODELS", "build_model", "load_agent", "save_agent"]
