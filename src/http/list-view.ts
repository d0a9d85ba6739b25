/** The envelope of every list the APIs answer: `{object: 'list', data}` (OpenAI's shape). */
export interface ListView<T> {
  object: 'list';
  data: T[];
}

export const listView = <T>(data: T[]): ListView<T> => ({ object: 'list', data });
