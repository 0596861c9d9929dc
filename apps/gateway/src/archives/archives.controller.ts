import { Controller, Get, Inject, Param, Req, Res } from '@nestjs/common';
import type { Request, Response } from 'express';
import { PrincipalId } from '../auth/auth';
import { ArchivesService } from './archives.service';

@Controller('v1/sessions/:id/files/archive')
export class ArchivesController {
  constructor(@Inject(ArchivesService) private readonly archives: ArchivesService) {}

  @Get()
  async archive(@PrincipalId() principalId: string, @Param('id') id: string, @Req() req: Request, @Res() res: Response): Promise<void> {
    await this.archives.send(req, res, principalId, id);
  }
}
