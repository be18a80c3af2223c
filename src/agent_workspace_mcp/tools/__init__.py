"""Tool modules, one per family; each exposes `register(app, services)`."""
