"""The gin-configured jobs behind python -m crosstask.{train,eval,infer,compile,embed,...}."""
