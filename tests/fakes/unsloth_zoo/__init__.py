"""Test-only fake of unsloth_zoo 2026.10.9: only ``vllm_utils.delete_vllm``."""
