import { Global, Module } from '@nestjs/common';
import { Downloads } from '../downloads/downloads';
import { ResponseWriter } from './response-writer';

/** What every feature's controllers and services share: writing responses, and downloads of stored objects. */
@Global()
@Module({ providers: [ResponseWriter, Downloads], exports: [ResponseWriter, Downloads] })
export class HttpModule {}
