// The app's tables, as the PowerSync service syncs them: lists, and the
// todos in them. The SDK turns this into views over oplite's synced tables;
// every table also has a text `id` column.
import { column, Schema, Table } from '@powersync/web';

const lists = new Table({
  name: column.text,
  owner_id: column.text,
});

const todos = new Table(
  {
    list_id: column.text,
    description: column.text,
    completed: column.integer,
  },
  { indexes: { list: ['list_id'] } },
);

export const schema = new Schema({ lists, todos });
