import { SetMetadata } from '@nestjs/common';

export const IS_PUBLIC = 'uhp:isPublic';

/** Marks a route that needs no API key (health, metrics, limits, OpenAPI). */
export const Public = () => SetMetadata(IS_PUBLIC, true);
