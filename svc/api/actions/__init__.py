"""Actions: metadata operations (`ops`), synchronous calls (`sync`), the
handler's answer checked and projected (`output`), asynchronous calls and their worker
(`async_calls`), and the operation runner mixing them with database fields (`run`)."""
