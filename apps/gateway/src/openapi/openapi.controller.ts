import { Controller, Get, Header } from '@nestjs/common';
import { Public } from '@app/common';
import { OPENAPI_DOCUMENT } from './openapi.document';

/** Swagger UI from the swagger-ui-dist package, served from this origin (no CDN). */
const DOCS_PAGE = `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>uhp-files API</title>
<link rel="stylesheet" href="/docs/assets/swagger-ui.css"></head>
<body><div id="ui"></div>
<script src="/docs/assets/swagger-ui-bundle.js"></script>
<script src="/docs/assets/init.js"></script>
</body></html>`;

export const DOCS_INIT_SCRIPT = `window.ui = SwaggerUIBundle({ url: '/openapi.json', dom_id: '#ui' });`;

@Controller()
export class OpenApiController {
  @Public()
  @Get('openapi.json')
  document() {
    return OPENAPI_DOCUMENT;
  }

  @Public()
  @Get('docs')
  @Header('content-type', 'text/html; charset=utf-8')
  @Header('content-security-policy', "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'")
  docs() {
    return DOCS_PAGE;
  }

  @Public()
  @Get('docs/assets/init.js')
  @Header('content-type', 'text/javascript; charset=utf-8')
  init() {
    return DOCS_INIT_SCRIPT;
  }
}
