"""Changes to the model store that the daemon runs for its clients: creating a model from a
Modelfile (``create``) and pulling from Hugging Face (``pulls``)."""
