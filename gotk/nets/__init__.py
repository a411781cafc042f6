"""Networks and agent files.

``build_model(name, num_planes, board_size)`` builds a network; ``load_agent(path)`` / ``save_agent`` read and
write an agent file (safetensors weights + JSON description).
"""

from gotk.nets.agent import Agent, load_agent
from gotk.nets.agent_file import AgentError, save_agent
from gotk.nets.networks import MODELS, build_model

__all__ = ["Agent", "AgentError", "MODELS", "build_model", "load_agent", "save_agent"]
