import { Module } from '@nestjs/common';
import { BlockStaging } from './completion/block-staging';
import { ComposedCompletion } from './completion/composed.completion';
import { JoinBlocksCompletion } from './completion/join-blocks.completion';
import { UploadCompletion } from './completion/upload-completion';
import { WholeObjectCompletion } from './completion/whole-object.completion';
import { PendingUploads } from './pending-uploads';
import { UploadAdmission } from './upload-admission';

/**
 * What the two resumable protocols (OpenAI's Uploads API and tus) share: an upload row with parts, admitted
 * against the caps, completed into a file by the same strategies, cancelled the same way.
 */
@Module({
  providers: [
    UploadAdmission,
    PendingUploads,
    UploadCompletion,
    JoinBlocksCompletion,
    BlockStaging,
    WholeObjectCompletion,
    ComposedCompletion,
  ],
  exports: [UploadAdmission, PendingUploads, UploadCompletion],
})
export class ResumableUploadsModule {}
