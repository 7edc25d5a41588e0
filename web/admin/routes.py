"""The admin view's two plain HTTP routes: redeem a sign-in/sign-out ticket for a fresh browser id, and
download an export once. Both answer only the browser the ticket or export was made for."""

from __future__ import annotations

import contextlib
import json

from fastapi import APIRouter, Request, Response
from fastapi.responses import FileResponse, JSONResponse
from starlette.background import BackgroundTask
from starlette.concurrency import run_in_threadpool

from web.admin.actions import AdminActions
from web.server.identity import cookie_attributes, form_cookie_attributes

_MAX_TICKET_BODY = 1024


def admin_router(admin: AdminActions) -> APIRouter:
    router = APIRouter(include_in_schema=False)

    @router.post("/admin/session")
    async def session(request: Request) -> Response:
        body = b""
        async for chunk in request.stream():
            body += chunk
            if len(body) > _MAX_TICKET_BODY:
                return JSONResponse({"detail": "Not a sign-in ticket."}, status_code=413, headers={"connection": "close"})
        ticket = None
        with contextlib.suppress(ValueError, AttributeError):
            ticket = json.loads(body).get("ticket")
        cookie = await run_in_threadpool(admin.redeem, ticket, request)  # shared stores touch the database
        if cookie is None:
            return JSONResponse({"detail": "This ticket has expired or is not this browser's: sign in again."},
                                status_code=403)
        response = JSONResponse({"detail": "Done."})
        secure, identities = admin.identities.secure_cookie, admin.identities
        response.headers.append("set-cookie", cookie_attributes(cookie, secure=secure))
        # The fresh id's anti-forgery token, which the page sends with every admin event from now on.
        response.headers.append("set-cookie", form_cookie_attributes(identities.form_token(identities.browser_key(cookie)), secure=secure))
        response.headers["cache-control"] = "no-store"
        return response

    @router.get("/admin/export/{token}")
    def download(token: str, request: Request) -> Response:
        offer = admin.take_export(token, request)
        if offer is None:
            detail = "This download was used, has expired or is another browser's: export again from the admin view."
            return JSONResponse({"detail": detail}, status_code=404)
        return FileResponse(
            offer.path, filename=offer.filename, headers={"cache-control": "no-store"},
            background=BackgroundTask(offer.path.unlink, missing_ok=True),
        )

    return router
