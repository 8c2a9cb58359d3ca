"""Rendering predictions: terminal tables (`table`), JSON (`jsonout`), HTML (`html`)."""
