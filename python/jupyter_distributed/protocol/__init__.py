"""The kernel↔rank protocol, in one place and with the standard library only (it ships to
SageMaker inside the job's code package).

- :mod:`.messages`: every message kind, and :func:`~.messages.parse` of a verified header;
  the messages are frozen dataclasses in :mod:`.commands` (kernel → rank) and :mod:`.reports`
  (rank → kernel), with ``to_header``/``from_header`` from :mod:`.header`;
- :mod:`.signing`: HMAC-signed frames, refused before anything is unpickled;
- :mod:`.metrics`: ``report()`` samples packed in one restricted pickle;
- :mod:`.shared`: large pushes through one shared-memory file;
- :mod:`.frames`: length-prefixed frames in a file (SageMaker's push and pull);
- :mod:`.tagged`: the tagged lines of a rank without a channel (SageMaker's logs).
- :mod:`.datavalues`: pulled values as data that runs no code when read (SageMaker's results;
  NumPy and torch only for their own values).
"""
